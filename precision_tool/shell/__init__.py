"""The interactive shell: the prompt_toolkit loop, the one error boundary, completion."""
