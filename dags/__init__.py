"""Tidewater DAGs (Airflow DAG folder); ``dags.tidewater_common`` holds the shared helpers."""
