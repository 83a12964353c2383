"""HTTP adapters: validate, call a service or selector, serialize."""
