"""The checks ``ac`` runs after the comparison summary; each returns a result and never prints."""
