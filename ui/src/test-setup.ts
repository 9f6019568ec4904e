// Vitest: nothing global beyond jsdom; each test renders what it needs.
export {};
