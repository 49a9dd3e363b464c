package org.apache.spark.kafka010;

import java.util.Locale;
import scala.Tuple2;
import scala.collection.immutable.Seq;

/**
 * Tidewater shim for the Scala object {@code KafkaRedactionUtil}: hides secrets in Kafka
 * parameters before Spark logs them.
 */
public final class KafkaRedactionUtil$ {
  public static final KafkaRedactionUtil$ MODULE$ = new KafkaRedactionUtil$();

  private KafkaRedactionUtil$() {}

  static boolean isSecret(String key) {
    String k = key.toLowerCase(Locale.ROOT);
    return k.contains("password") || k.contains("jaas") || k.contains("secret")
        || k.contains("token") || k.endsWith(".key");
  }

  public Seq<Tuple2<String, String>> redactParams(Seq<Tuple2<String, Object>> params) {
    java.util.List<Tuple2<String, String>> out = new java.util.ArrayList<>();
    scala.collection.Iterator<Tuple2<String, Object>> it = params.iterator();
    while (it.hasNext()) {
      Tuple2<String, Object> p = it.next();
      String value = p._2() == null ? "null" : p._2().toString();
      out.add(new Tuple2<>(p._1(), isSecret(p._1()) ? "*********(redacted)" : value));
    }
    return scala.jdk.javaapi.CollectionConverters.asScala(out).toList();
  }
}
