"""What runs underneath: the Spark session factory, local services (Kafka, metastore, Thrift, Airflow) and JVM jars."""
