"""Grounded answers: every statement cites a retrieved source, or the question is declined.

- answering: answer_question, the one answer path (retrieve, check relevance, ask the model).
- settings: AnswerSettings (how questions are answered) and AnswerConfiguration (one under
  evaluation, with its label).
- grounding: sources, the answer prompt, and turning model output into an answer or refusal.
"""
