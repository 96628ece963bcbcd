import pytest

from croft.engine.staleness import Reason, data_version, stale_reasons

BUILT = {
    "codeHash": "h1",
    "lastLoadedAt": "2026-01-01T00:00:00.000Z",
    "inputsSeen": {"raw": {"inputLastLoadedAt": "2026-01-01T00:00:00.000Z"}},
}
RAW = {"lastLoadedAt": "2026-01-01T00:00:00.000Z"}
RAW_NEWER = {"lastLoadedAt": "2026-01-02T00:00:00.000Z"}


@pytest.mark.parametrize(
    ("kind", "entry", "code_hash", "inputs", "expected"),
    [
        pytest.param("ingest", None, "h", {}, [Reason("never_built")], id="ingest-never-built"),
        pytest.param("ingest", {"codeHash": "old"}, "new", {}, [], id="ingest-code-change-is-not-stale"),
        pytest.param("sql", None, "h1", {"raw": RAW}, [Reason("never_built")], id="transform-never-built"),
        pytest.param("sql", BUILT, "h1", {"raw": RAW}, [], id="fresh"),
        pytest.param("sql", BUILT, "h2", {"raw": RAW}, [Reason("code_changed")], id="code-changed"),
        pytest.param(
            "sql", BUILT, "h1", {"raw": RAW_NEWER}, [Reason("input_changed", "raw")], id="input-changed"
        ),
        pytest.param("sql", BUILT, "h1", {"raw": None}, [], id="unbuilt-input-is-unknown-not-stale"),
        pytest.param("python", BUILT, None, {"raw": RAW}, [], id="unknown-hash-is-not-stale"),
        pytest.param(
            "sql",
            {**BUILT, "inputsSeen": {}},
            "h1",
            {"raw": RAW},
            [Reason("input_changed", "raw")],
            id="input-never-seen",
        ),
    ],
)
def test_stale_reasons(kind, entry, code_hash, inputs, expected):
    assert stale_reasons(kind, entry, code_hash, inputs) == expected


def test_a_replaced_input_counts_by_its_later_stamp():
    assert data_version({"lastLoadedAt": "2026-01-01", "lastReplacedAt": "2026-02-01"}) == "2026-02-01"
    assert data_version(None) is None
