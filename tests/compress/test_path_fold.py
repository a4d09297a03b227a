"""Parallel paths are written once when a name index cannot hold every name (#38)."""

from contextengine.compress.path_fold import fold_parallel_paths


def test_paths_differing_in_one_folder_are_written_once_where_the_first_stood() -> None:
    names = ["a/b/x/L", "a/b/y/L", "q.py", "a/b/z/L", "a/b/z/M", "t/u/v1", "t/u/v2", "t/u/v3"]
    assert fold_parallel_paths(names) == ["a/b/{x,y,z}/L", "q.py", "a/b/z/M", "t/u/{v1,v2,v3}"]


def test_fewer_than_three_short_paths_and_plain_names_stay_as_they_are() -> None:
    names = ["a/b/x/L", "a/b/y/L", "ab/cd", "setup.cfg", "os.path.join"]
    assert fold_parallel_paths(names) == names


def test_a_folder_keeps_its_slash_and_an_absolute_path_its_root() -> None:
    assert fold_parallel_paths(["/r/d/e/", "/r/d/f/", "/r/d/g/"]) == ["/r/d/{e,f,g}/"]
