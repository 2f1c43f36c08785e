"""The do-not-disrupt annotation's values as Karpenter v1.14 reads them (pkg/utils/pod IsDoNotDisruptActive)."""

import math

import pytest

from nodewright.model.do_not_disrupt import go_duration, invalid_reason, is_active, protected_until


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("5m", 300.0), ("1h30m", 5400.0), ("1.5h", 5400.0), ("90s", 90.0), ("250ms", 0.25), ("-2m", -120.0), ("0", 0.0)],
)
def test_go_durations_parse_as_time_parse_duration_does(text: str, seconds: float) -> None:
    assert go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "5", "5d", "h", "1h 30m", "true", "yes"])
def test_what_go_refuses_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        go_duration(text)


def test_true_protects_for_ever() -> None:
    assert protected_until("true", 100.0) == math.inf
    assert is_active("true", None, 1e12)


def test_a_duration_counts_from_the_pod_start() -> None:
    assert is_active("3m", 1000.0, 1000.0 + 179)
    assert not is_active("3m", 1000.0, 1000.0 + 180)


def test_a_duration_without_a_start_time_fails_safe() -> None:
    assert is_active("3m", None, 1e12)


@pytest.mark.parametrize("value", ["false", "0s", "-5m", "forever", "1d"])
def test_invalid_or_non_positive_values_protect_nothing_and_say_why(value: str) -> None:
    assert not is_active(value, 1000.0, 1000.0)
    assert "karpenter.sh/do-not-disrupt" in invalid_reason(value)


def test_no_annotation_protects_nothing() -> None:
    assert protected_until(None, 1000.0) is None
