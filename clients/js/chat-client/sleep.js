// sleep.js: a promise that resolves after a delay (the waits a rate limit asks for).

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
