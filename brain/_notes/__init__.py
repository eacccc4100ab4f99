"""Use cases on notes: remember, correct, forget, relate, the levers, defining memories."""
