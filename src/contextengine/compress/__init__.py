"""compress package."""
