import pytest

from croft.core.problems import CODES, CroftError, Problem, exit_code_for, problem
from croft.core.result import Next, Result


def test_the_envelope_has_exactly_the_contract_keys():
    result = Result(
        data={"x": 1},
        problems=[problem("SCHEDULE_INVALID", "bad minute", "use 0-59", suggestion="0 * * * *")],
        next=[Next("croft validate", "check")],
    )
    envelope = result.envelope()
    assert list(envelope) == ["ok", "data", "problems", "next"]
    assert envelope["ok"] is False
    assert envelope["problems"][0] == {
        "code": "SCHEDULE_INVALID",
        "severity": "error",
        "message": "bad minute",
        "hint": "use 0-59",
        "suggestion": "0 * * * *",
        "docs": "croft docs SCHEDULE_INVALID",
    }
    assert envelope["next"] == [{"command": "croft validate", "reason": "check"}]


@pytest.mark.parametrize(
    ("codes", "expected"),
    [
        pytest.param([], 0, id="nothing-wrong"),
        pytest.param(["SCHEDULE_INVALID"], 2, id="refusal"),
        pytest.param(["CHECK_FAILED"], 3, id="checks-only"),
        pytest.param(["CHECK_FAILED", "HTTP_ERROR"], 1, id="a-failure-beats-checks"),
        pytest.param(["ASSET_BUSY", "CONFIG_INVALID"], 4, id="busy-beats-refusal"),
        pytest.param(["HTTP_ERROR", "INTERRUPTED"], 130, id="interrupt-wins"),
    ],
)
def test_exit_code_follows_the_precedence(codes, expected):
    assert exit_code_for([problem(code, "m", "h") for code in codes]) == expected


def test_warnings_do_not_fail_a_result():
    result = Result(problems=[Problem("SCHEDULE_HELD", "held", "run it", severity="warning")])
    assert result.is_ok and result.exit_code == 0


def test_every_registered_code_has_a_family_and_exit():
    for code, (family, exit_code) in CODES.items():
        assert code.isupper() and family in {"project", "run", "state"} and exit_code in {1, 2, 3, 4, 130}


def test_croft_error_carries_its_problem_and_round_trips_through_json():
    error = CroftError(
        "HTTP_ERROR", "GET / returned 503", "retry later", retryable=True, details={"status": 503}
    )
    again = Problem.from_dict(error.problem.to_dict())
    assert again == error.problem and error.retryable and str(error).startswith("HTTP_ERROR")
