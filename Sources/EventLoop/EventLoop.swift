// Event loop sources follow.
