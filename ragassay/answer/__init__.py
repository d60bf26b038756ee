"""Grounded answers: every statement cites a retrieved source, or the question is declined.

- answering: answer_question, the one answer path (retrieve, check relevance, ask the model).
- grounding: sources, the answer prompt, and turning model output into an answer or refusal.
"""
