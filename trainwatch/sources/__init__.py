"""Where lines come from: files read once (check), files followed live (tail), GPUs (NVML)."""
