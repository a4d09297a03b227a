from contextengine import add_mention_reminders, find_mentions

REMINDER = (
    "<system-reminder>\nThe user mentioned @{}.\n"
    "You MUST read this file with the Read tool before answering.\n</system-reminder>"
)


def test_finds_paths_in_order_deduplicated():
    assert find_mentions("see @src/a.py and @b.md then @src/a.py") == ["src/a.py", "b.md"]


def test_not_after_letter_or_digit():
    assert find_mentions("mail me: bob@example.com or x1@y.z") == []
    assert find_mentions("(@a.py) @b_c-d/e.txt") == ["a.py", "b_c-d/e.txt"]


def test_trailing_sentence_period_is_not_part_of_the_path():
    assert find_mentions("Look at @src/utils/auth.ts.") == ["src/utils/auth.ts"]


def test_fenced_code_holds_no_mentions():
    text = (
        "Fails after @src/schema.py changed:\n```python\n@validates('x')\ndef f(): ...\n```\n"
        "~~~~\n@Override\n~~~\nstill code\n~~~~~\nSee @notes.md\n```\n@unclosed.py"
    )
    assert find_mentions(text) == ["src/schema.py", "notes.md"]
    assert find_mentions("inline `@a.py` counts") == ["a.py"]


def test_no_spaces_and_no_non_ascii():
    assert find_mentions("@my file.txt") == ["my"]
    assert find_mentions("@文件.txt") == []


def test_reminder_template_appended_to_user_text():
    out = add_mention_reminders("Fix @src/utils/auth.ts please")
    assert out == "Fix @src/utils/auth.ts please\n\n" + REMINDER.format("src/utils/auth.ts")


def test_at_most_five_then_and_n_more():
    text = " ".join(f"@f{i}.py" for i in range(8))
    out = add_mention_reminders(text)
    for i in range(5):
        assert REMINDER.format(f"f{i}.py") in out
    assert "@f5.py." not in out
    assert out.endswith("<system-reminder>\n(and 3 more…)\n</system-reminder>")


def test_no_mentions_leaves_text_unchanged():
    assert add_mention_reminders("nothing here") == "nothing here"
