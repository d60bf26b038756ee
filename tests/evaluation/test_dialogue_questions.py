"""A golden dialogue's turns as an evaluation's questions: asked whole, kept whole in parts, and
answered with the conversation shown."""

from __future__ import annotations

from ragassay.answer.grounding import Source, answer_messages
from ragassay.evaluation.questions import EvalQuestion, dialogue_units, whole_dialogue_parts, with_earlier_turns


def turn(dialogue: str, number: int, history: tuple[str, ...] = (), answerable: bool = True) -> EvalQuestion:
    return EvalQuestion(
        "c",
        f"{dialogue}#{number}",
        f"{dialogue} question {number}",
        {("c", "a.md"): 1} if answerable else {},
        dialogue_id=dialogue,
        turn=number,
        history=history,
        answerable=answerable,
    )


def test_a_dialogue_is_asked_whole_and_never_split_between_parts():
    single = EvalQuestion("c", "q1", "alone?", {("c", "a.md"): 1})
    a1, a2, a3 = turn("a", 1), turn("a", 2, ("a question 1",)), turn("a", 3, ("a question 1", "a question 2"))
    b1, b2 = turn("b", 1), turn("b", 2, ("b question 1",))
    questions = [single, a1, a2, a3, b1, b2]
    assert dialogue_units(questions) == [[0], [1, 2, 3], [4, 5]]
    parts = whole_dialogue_parts(questions, 2)
    assert [[q.query_id for q in part] for part in parts] == [["q1"], ["a#1", "a#2", "a#3"], ["b#1", "b#2"]]
    assert whole_dialogue_parts(questions, None) == [questions]
    # A retrieval evaluation scores a#3 only: a system is still asked a#1 and a#2 before it.
    filled = with_earlier_turns([single, a3])
    assert [(q.query_id, q.question, q.answerable) for q in filled] == [
        ("q1", "alone?", True),
        ("a#1", "a question 1", False),
        ("a#2", "a question 2", False),
        ("a#3", "a question 3", True),
    ]
    assert filled[2].history == ("a question 1",)


def test_a_follow_up_is_answered_from_its_sources_with_the_conversation_shown():
    source = Source(1, "c", "feeding.txt", "feeding.txt#0", 0, 40, None, "Autumn syrup is two parts sugar to one.")
    alone = answer_messages("And the autumn one?", [source])
    shown = answer_messages("And the autumn one?", [source], [("What ratio for spring syrup?", "One to one [1].")])
    assert "Conversation so far" not in alone[-1]["content"]
    request = shown[-1]["content"]
    assert (
        request.index("Conversation so far")
        < request.index("Sources:")
        < request.index("Question: And the autumn one?")
    )
    assert "User: What ratio for spring syrup?\nAssistant: One to one (1)." in request, "its markers made inert"
    assert shown[:-1] == alone[:-1], "the instruction and worked examples are grounded-answer/2's"


def test_faithfulness_stays_among_the_scores_a_traces_tab_shows_first():
    """MLflow's Traces tab shows a run's first five scores by name until a user picks others: a
    dialogue's own score must not push faithfulness out of them."""
    from ragassay.evaluation.answer_traces import REFUSAL, TURNS_HANDLED
    from ragassay.metrics.names import ANSWER_METRICS

    assert sorted({*ANSWER_METRICS, REFUSAL, TURNS_HANDLED}).index("faithfulness") < 5
