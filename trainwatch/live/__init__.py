"""Live watching: files followed as they grow, GPUs sampled, alerts as they fire."""
