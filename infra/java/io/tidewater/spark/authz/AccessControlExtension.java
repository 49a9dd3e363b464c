package io.tidewater.spark.authz;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import scala.Function1;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractFunction2;
import scala.runtime.BoxedUnit;

/**
 * The Thrift server's access control, a {@code spark.sql.extensions} entry placed after the serving
 * redirect (so its parser wraps the redirecting one): {@link AccessParser} and the check rule
 * {@link AccessCheck}. Check rules run in every analysis of the Hive session state's analyzer, the
 * Thrift server's (tests/integration/test_bi_security.py shows each refusal over JDBC).
 */
public final class AccessControlExtension extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
    @Override
    public BoxedUnit apply(SparkSessionExtensions extensions) {
        extensions.injectParser(new AbstractFunction2<SparkSession, ParserInterface, ParserInterface>() {
            @Override
            public ParserInterface apply(SparkSession session, ParserInterface delegate) {
                return new AccessParser((org.apache.spark.sql.classic.SparkSession) session, delegate);
            }
        });
        extensions.injectCheckRule(new AbstractFunction1<SparkSession, Function1<LogicalPlan, BoxedUnit>>() {
            @Override
            public Function1<LogicalPlan, BoxedUnit> apply(SparkSession session) {
                return new AccessCheck((org.apache.spark.sql.classic.SparkSession) session);
            }
        });
        return BoxedUnit.UNIT;
    }
}
