"""The admission rule (``scheduler.admit``): the cap and the pools, in fire order. Pure."""

from __future__ import annotations

from croft.scheduler.admit import Waiting, admit, free_slots


def _w(fire: str, root: str, group: str, *pools: str) -> Waiting:
    return Waiting(f"2026-06-01T{fire}:00.000Z", root, group, tuple(pools))


def test_oldest_fire_first_up_to_the_free_cap_slots():
    queue = [_w("03:00", "/b", "x"), _w("01:00", "/c", "y"), _w("02:00", "/a", "z"), _w("01:00", "/a", "w")]
    decided = admit(queue, 2, {})
    assert [(w.root, w.group) for w in decided.start] == [("/a", "w"), ("/c", "y")]  # ties: folder, group
    assert set(decided.waits.values()) == {"cap"} and len(decided.waits) == 2


def test_a_full_pool_waits_without_holding_back_the_groups_behind_it():
    queue = [
        _w("01:00", "/a", "charges", "stripe"),
        _w("02:00", "/b", "refunds", "stripe"),
        _w("03:00", "/c", "sql"),
    ]
    decided = admit(queue, 3, {"stripe": 1})
    assert [w.group for w in decided.start] == ["charges", "sql"]
    assert decided.waits == {queue[1]: "pool stripe"}


def test_a_pool_already_held_by_a_live_run_lets_none_of_its_groups_start():
    cap_free, pool_free = free_slots(3, {"stripe": 1}, [("stripe",)])
    assert (cap_free, pool_free) == (2, {"stripe": 0})
    decided = admit(
        [_w("01:00", "/a", "charges", "stripe"), _w("04:00", "/a", "orders")], cap_free, pool_free
    )
    assert [w.group for w in decided.start] == ["orders"]
    assert list(decided.waits.values()) == ["pool stripe"]


def test_a_full_cap_waits_as_cap_and_a_pool_with_no_size_known_has_no_slot():
    decided = admit([_w("01:00", "/a", "g", "mystery"), _w("02:00", "/a", "h")], 0, {})
    assert decided.start == ()
    assert [decided.waits[w] for w in sorted(decided.waits)] == ["pool mystery", "cap"]


def test_a_group_in_two_pools_takes_a_slot_of_each():
    queue = [
        _w("01:00", "/a", "both", "p", "q"),
        _w("02:00", "/a", "q_only", "q"),
        _w("03:00", "/a", "p_only", "p"),
    ]
    decided = admit(queue, 5, {"p": 2, "q": 1})
    assert [w.group for w in decided.start] == ["both", "p_only"]
    assert decided.waits == {queue[1]: "pool q"}
