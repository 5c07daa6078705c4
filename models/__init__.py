"""Abstractive models that write a Wikipedia lead from the ranked reference text (stage two)."""
