"""Paragraph extractors: rank a WikiSum article's reference paragraphs (stage one, part two)."""
