"""A small Python + JavaScript + TypeScript workspace for the code map tests."""

from __future__ import annotations

from pathlib import Path

import pytest

SOURCES = {
    "shop/models.py": '''"""Shop models."""


class Product:
    def __init__(self, name, price_cents):
        self.name = name
        self.price_cents = price_cents


class Cart:
    def __init__(self):
        self.items = []

    def add_item(self, product: Product):
        self.items.append(product)

    def total_cents(self):
        return sum(p.price_cents for p in self.items)


def format_price(cents):
    return f"{cents / 100:.2f} EUR"
''',
    "shop/checkout.py": """from shop.models import Cart, Product, format_price


def checkout_order(cart: Cart) -> str:
    return format_price(cart.total_cents())


def demo():
    cart = Cart()
    cart.add_item(Product("pen", 150))
    return checkout_order(cart)
""",
    "shop/legacy.py": "def unused_helper():\n    return 42\n",
    "web/cart.js": """export class CartView {
  constructor(items) { this.items = items; }
  render() { return this.items.map(i => formatPrice(i.cents)).join(", "); }
}

export function formatPrice(cents) {
  return (cents / 100).toFixed(2);
}
""",
    "web/app.js": """import { CartView, formatPrice } from "./cart.js";

function startApp(items) {
  const view = new CartView(items);
  console.log(formatPrice(100));
  return view.render();
}
startApp([]);
""",
    "web/types.ts": """export interface CartLine { cents: number; name: string }
export function totalOf(lines: CartLine[]): number {
  return lines.reduce((s, l) => s + l.cents, 0);
}
""",
    "web/summary.ts": """import { CartLine, totalOf } from "./types";

export function summaryLine(lines: CartLine[]): string {
  return `${lines.length} items, ${totalOf(lines)} cents`;
}
""",
    "README.md": "# shop\n",
    "node_modules/dep/index.js": "export function vendoredThing() {}\n",
    ".venv/lib/site.py": "def hidden_thing():\n    pass\n",
}


def write_workspace(root: Path) -> Path:
    """Write the fixture sources under ``root``."""
    for relative, text in SOURCES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def code_ws(tmp_path: Path) -> Path:
    """The fixture workspace in a fresh folder."""
    return write_workspace(tmp_path / "ws")
