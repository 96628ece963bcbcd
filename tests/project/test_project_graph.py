from croft.project.graph import Graph


def test_order_is_topological_with_ties_broken_by_name():
    graph = Graph({"c": [], "b": ["a"], "a": [], "d": ["b", "c"]})
    assert graph.order() == (["a", "b", "c", "d"], [])


def test_assets_on_or_after_a_cycle_are_reported_and_go_nowhere():
    graph = Graph({"a": ["b"], "b": ["a"], "c": ["a"], "x": []})
    assert graph.order() == (["x"], ["a", "b", "c"])


def test_downstream_is_transitive_and_excludes_the_start():
    graph = Graph({"raw": [], "clean": ["raw"], "report": ["clean"], "other": []})
    assert graph.downstream(["raw"]) == {"clean", "report"}
    assert graph.upstream("report") == {"clean", "raw"}


def test_inputs_that_are_not_assets_are_kept_apart():
    graph = Graph({"t": ["raw", "nowhere"], "raw": []})
    assert graph.inputs["t"] == ("raw",) and graph.missing["t"] == ("nowhere",)


def test_components_join_assets_that_share_an_input():
    graph = Graph({"a": [], "b": ["a"], "c": ["a"], "z": []})
    assert graph.components(["b", "c", "z"]) == [["b", "c"], ["z"]]
