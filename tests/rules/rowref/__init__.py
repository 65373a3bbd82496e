"""Row-at-a-time rules kept as oracles for their array ports, and a harness that runs either one."""
