import pytest

from benchmarks.steady_state import steady_state


def test_the_steady_state_is_the_median_of_the_last_rounds_against_the_fastest_warm_full_run():
    figures = steady_state([30.0, 18.0, 15.0, 12.0, 9.5, 11.0, 10.0], 3, [90.0, 85.0])
    assert figures == {"rounds": "5-7 of 7", "median_seconds": 10.0, "full_seconds": 85.0, "ratio": 0.118}


def test_of_an_even_count_of_last_rounds_the_slower_middle_one_counts():
    assert steady_state([20.0, 8.0, 9.0, 12.0, 7.0], 4, [100.0])["median_seconds"] == 9.0


@pytest.mark.parametrize("last, fulls", [(0, [80.0]), (4, [80.0]), (2, [])])
def test_a_steady_state_without_its_rounds_or_a_full_run_is_refused(last, fulls):
    with pytest.raises(ValueError, match="steady state"):
        steady_state([10.0, 9.0, 8.0], last, fulls)
