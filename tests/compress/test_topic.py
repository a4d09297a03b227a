from pathlib import Path

from contextengine.compress.externalize import Externalizer
from contextengine.compress.observation import ObservationProcessor
from contextengine.compress.topic import TOPIC_PATHS, load_word_frequencies, on_topic, user_text
from contextengine.session.entries import UserEntry
from contextengine.session.session import Session
from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.traits import UNDECLARED


def test_paths_holding_a_rare_word_of_the_topic_in_any_case_are_on_topic() -> None:
    names = ["timeseries.py", *[f"repo/pkg/m{i}" for i in range(6)], "repo/pkg/timeseries/io"]
    topic = "TimeSeries: a misleading exception when a required column is removed"
    assert on_topic(names, topic) == ["repo/pkg/timeseries/io"], "a path, not a bare name"


def test_a_word_is_on_topic_as_a_whole_part_of_a_path_not_inside_one() -> None:
    names = [
        *[f"repo/pkg/m{i}" for i in range(6)],
        "repo/lombscargle/implementations",
        "repo/io/ascii",
    ]
    assert on_topic(names, "implement the reader of ascii.qdp") == ["repo/io/ascii"]


def test_a_camel_case_name_of_the_topic_names_its_package_by_a_part() -> None:
    names = [*[f"astropy/m{i}" for i in range(6)], "astropy/wcs/wcsapi", "astropy/io/fits"]
    assert on_topic(names, "SlicedLowLevelWCS gives the wrong world_to_pixel") == [
        "astropy/wcs/wcsapi"
    ]


def test_common_words_and_words_a_quarter_of_the_paths_hold_are_no_topic() -> None:
    names = [f"astropy/pkg{i}/tests" for i in range(8)]
    assert on_topic(names, "astropy: the tests of pkg3 fail") == ["astropy/pkg3/tests"]
    assert on_topic(names, "the tests fail, please have a look") == []


def test_at_most_a_few_paths_are_on_topic_in_their_order() -> None:
    names = [f"io/ascii/f{i}.py" for i in range(20)] + [f"io/fits/f{i}.py" for i in range(90)]
    assert on_topic(names, "ascii tables lose their header") == names[:TOPIC_PATHS]


def test_user_text_is_what_the_user_said(tmp_path: Path) -> None:
    session = Session.create(tmp_path / "s")
    session.append(UserEntry(text="fix the TimeSeries bug"))
    session.append(UserEntry(text="and the docs"))
    assert user_text(session) == "fix the TimeSeries bug\nand the docs"


def _listing() -> str:
    """An ``ls -R`` whose 400 folders do not fit an index; the topic's is past its room."""
    folders = [f"/repo/pkg/module{i:03d}/sub" for i in range(400)]
    folders[300] = "/repo/pkg/timeseries"
    return "\n".join(f"{f}:\nfile_{k:03d}.py\n" for k, f in enumerate(folders))


def test_a_ref_index_that_cannot_hold_every_name_lists_the_topics_paths(tmp_path: Path) -> None:
    def processor(topic: str) -> ObservationProcessor:
        return ObservationProcessor(
            Externalizer(tmp_path / "artifacts", str),
            mode="full",
            externalize=True,
            traits=lambda _name: UNDECLARED,
            topic=lambda: topic,
        )

    arguments = {"command": "ls -R /repo"}
    text = _listing()
    off = processor("fix the bug").process(1, "Bash", arguments, ToolOutcome.ok(text))
    on = processor("TimeSeries loses a column").process(2, "Bash", arguments, ToolOutcome.ok(text))
    assert " more)" in off.live and "repo/pkg/timeseries" not in off.live
    assert "repo/pkg/timeseries" in on.live.split("Names in the full output: ", 1)[1]


def test_load_word_frequencies_reads_the_english_table_once_and_for_all() -> None:
    from wordfreq import get_frequency_dict

    get_frequency_dict.cache_clear()
    load_word_frequencies()
    assert get_frequency_dict.cache_info().currsize == 1, "the table a tool result consults"
