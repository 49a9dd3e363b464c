"""How data moves: pure transforms, Kafka/Delta adapters and thin job entry points."""
