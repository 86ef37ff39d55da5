"""harness.compare_with_previous's output: both builds' lines side by side, medians of runs."""

from __future__ import annotations

from bench.harness import _median_lines, _without_previous, side_by_side


def test_numbers_are_medians_of_the_runs_and_keep_their_format() -> None:
    runs = [
        ["commit 13d0065, 3 rounds: 1,234.5 ms", "| 12 | a |", "only once"],
        ["commit 13d0065, 5 rounds: 1,334.5 ms", "| 14 | a |"],
        ["commit 13d0065, 4 rounds: 9,999.0 ms", "| 10 | a |"],
    ]
    assert _median_lines(runs) == [
        "commit 13d0065, 4 rounds: 1,334.5 ms",
        "| 12 | a |",
        "only once",
    ]


def test_table_rows_get_a_build_column_and_other_lines_a_label() -> None:
    this = ["same", "| what | ms |", "|---|---:|", "| a | 1.0 |", "took 2 s"]
    previous = ["same", "| what | ms |", "|---|---:|", "| a | 3.0 |", "took 5 s"]
    assert side_by_side({"this": this, "previous": previous}) == [
        "same",
        "| build | what | ms |",
        "|---|---|---:|",
        "| this | a | 1.0 |",
        "| previous | a | 3.0 |",
        "this: took 2 s",
        "previous: took 5 s",
    ]


def test_outputs_of_different_shapes_follow_each_other() -> None:
    assert side_by_side({"this": ["a", "b"], "previous": ["a"]}) == [
        "== this",
        "a",
        "b",
        "== previous",
        "a",
    ]


def test_the_children_get_the_command_line_without_the_previous_options() -> None:
    argv = ["--db", "sqlite", "--previous", "DIR", "--previous-rounds=3", "--rounds", "2"]
    assert _without_previous(argv) == ["--db", "sqlite", "--rounds", "2"]
