"""Pairing, metrics, the streaming comparison engine and the result CSV."""
