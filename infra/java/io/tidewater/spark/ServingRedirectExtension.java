package io.tidewater.spark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractFunction2;
import scala.runtime.BoxedUnit;

/**
 * The Thrift server's {@code spark.sql.extensions} entry (after Delta's): wraps the SQL parser in
 * {@link ServingParser}. A parser, not an analyzer rule: the Hive session state builds its analyzer
 * without the extensions' hint rules, and a resolution rule would run after the metastore lookup it
 * is there to avoid.
 */
public final class ServingRedirectExtension extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
    @Override
    public BoxedUnit apply(SparkSessionExtensions extensions) {
        extensions.injectParser(new AbstractFunction2<SparkSession, ParserInterface, ParserInterface>() {
            @Override
            public ParserInterface apply(SparkSession session, ParserInterface delegate) {
                return new ServingParser((org.apache.spark.sql.classic.SparkSession) session, delegate);
            }
        });
        return BoxedUnit.UNIT;
    }
}
