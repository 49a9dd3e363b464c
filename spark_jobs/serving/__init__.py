"""The Thrift server's side of serving: its driver program and the in-memory serving cache."""
