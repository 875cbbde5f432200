"""Value fit: fetch prefers the skill whose parameters take the values the task holds."""

from __future__ import annotations

from skill_library import value_fit
from skill_library.value_fit import TaskValues, fit, param_shapes, shape


def test_shapes_keep_symbols_and_long_digit_runs_and_drop_the_rest():
    assert shape("#W8660744") == "#a"
    assert shape("wen.varga93@example.com") == "a@a"
    assert shape("credit_card_1234") == "a_a_9"
    assert shape("53741") == "99999"
    assert shape("Apt 12") == "a 9"
    # words say nothing: a name or a reason has no distinctive shape
    assert param_shapes({"first_name": "Wen", "reason": "ordered by mistake", "zip": "53741",
                         "item_ids": ["1234567890", "2234567890"]}) == {
        "zip": ["99999"], "item_ids": ["9999999999"]}


def test_fit_counts_parameters_found_and_task_values_no_parameter_takes():
    task = TaskValues.of("I'm Wen Varga, wen.varga93@example.com. Please pay for #W8660744 with credit_card_1234.")
    assert fit(task, {"email": ["a@a"], "order_id": ["#a"], "payment_method_id": ["a_a_9"]}) == (1.0, 0.0)
    share, loose = fit(task, {"email": ["a@a"], "order_id": ["#a"]})  # a cancel skill: the card is left over
    assert share == 1.0 and loose == 1 / 3
    share, loose = fit(task, {"zip": ["99999"], "order_id": ["#a"]})  # by name and zip: no zip here
    assert share == 0.5 and loose == 2 / 3
    # the zip's shape does not match inside a longer digit run
    assert fit(TaskValues.of("order 1234567"), {"zip": ["99999"]}) == (0.0, 1.0)


def test_entries_without_shapes_keep_their_similarity():
    class Hit:
        similarity = 0.5
        shapes = None

    assert value_fit.score(TaskValues.of("cancel #W1"), Hit()) == 0.5
    assert value_fit.decode(value_fit.encode({"order_id": "#W1"})) == {"order_id": ["#a"]}
    assert value_fit.encode(None) == ""


def _learn(library, task, params, calls):
    from skill_library.induction import DataflowGeneralizer
    from skill_library.models import Outcome, ToolCall, Trace

    trace = Trace(task=task, params=params, outcome=Outcome(success=True, verifier="test"),
                  calls=[ToolCall(name=n, arguments=a, result=r) for n, a, r in calls])
    learned = library.learn(trace, generalizer=DataflowGeneralizer())
    assert learned.status == "saved", learned
    return learned.skill.name


def test_fetch_picks_the_lookup_the_task_has_values_for(library):
    by_email = _learn(library, "Customer: ana@example.org. Please cancel my order #W1000001.",
                      {"email": "ana@example.org", "order_id": "#W1000001"},
                      [("find_user_id_by_email", {"email": "ana@example.org"}, "u1"),
                       ("cancel_pending_order", {"order_id": "#W1000001"}, "ok")])
    by_zip = _learn(library, "Customer: Ana Lee, 60614. I need order #W1000002 cancelled right away.",
                    {"first_name": "Ana", "last_name": "Lee", "zip": "60614", "order_id": "#W1000002"},
                    [("find_user_id_by_name_zip", {"first_name": "Ana", "last_name": "Lee", "zip": "60614"}, "u2"),
                     ("cancel_pending_order", {"order_id": "#W1000002"}, "ok")])
    # worded like the name-and-zip skill's example, but it holds an email and no zip
    got = library.fetch("Hello, bo.kim@example.com here. I need order #W2000003 cancelled right away.", k=2,
                        min_reliability=0)
    assert [m.skill.name for m in got][0] == by_email
    got = library.fetch("Bo Kim, zip 10001. Please cancel my order #W2000003.", k=2, min_reliability=0)
    assert [m.skill.name for m in got][0] == by_zip
    assert all(-1.0 <= m.similarity <= 1.0 for m in got)  # the plain cosine, not the adjusted score


def test_a_prototype_keeps_the_shapes_of_all_its_traces_most_common_first():
    from skill_library.value_fit import MAX_SHAPES_PER_PARAMETER, decode, encode_many

    bound = [{"order_id": "#W1234567", "payment_method_id": pm, "reason": "too slow"}
             for pm in ["credit_card_1234567", "paypal_7654321", "credit_card_7777777", "gift_card_1111111",
                        "paypal_1234567", "x_1", "y_12345", "z_123456"]]
    shapes = decode(encode_many(bound))
    assert shapes["order_id"] == ["#a"] and "reason" not in shapes
    assert len(shapes["payment_method_id"]) == MAX_SHAPES_PER_PARAMETER
    # the most common: cards and gift cards (3), paypal (2), then one of the rare ones
    assert shapes["payment_method_id"] == ["a_9", "a_99999", "a_9999999", "a_a_9999999"]
