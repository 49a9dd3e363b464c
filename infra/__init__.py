"""What runs underneath: local services (Kafka, metastore, Thrift, Airflow) and JVM jars."""
