"""The agents of the multi-agent RAG pipeline: Planner, Manager, Knowledge, Responder, Reviewer."""
