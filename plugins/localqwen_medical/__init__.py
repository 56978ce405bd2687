"""Medical question answering with guard rails: an intent router, colloquial-to-medical query
rewriting, answers grounded in a knowledge base with checked ``[Evidence n]`` citations, a safety
audit (allergies, doses, special populations) that refines or blocks a draft, and a patient profile
kept per chat session. Not a substitute for a clinician; every answer says so."""
