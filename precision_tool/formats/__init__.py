"""Pure readers, writers and converters of the real dump formats. Nothing here prints."""
