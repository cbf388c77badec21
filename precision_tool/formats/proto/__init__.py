"""Protobuf schemas of the files the tool reads, declared in code (see ``schema``)."""
