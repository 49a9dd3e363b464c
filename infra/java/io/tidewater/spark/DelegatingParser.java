package io.tidewater.spark;

import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.parser.ParameterContext;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import scala.collection.immutable.Seq;

/**
 * A SQL parser that hands every call to the parser it wraps: the parsers of Tidewater's Thrift server
 * ({@link ServingParser}, {@code authz.AccessParser}) extend it and override only the calls they change.
 */
public abstract class DelegatingParser implements ParserInterface {
    protected final ParserInterface delegate;

    protected DelegatingParser(ParserInterface delegate) {
        this.delegate = delegate;
    }

    @Override
    public LogicalPlan parsePlan(String sql) throws ParseException {
        return delegate.parsePlan(sql);
    }

    @Override
    public LogicalPlan parsePlanWithParameters(String sql, ParameterContext parameters) throws ParseException {
        return delegate.parsePlanWithParameters(sql, parameters);
    }

    @Override
    public LogicalPlan parseQuery(String sql) throws ParseException {
        return delegate.parseQuery(sql);
    }

    @Override
    public Expression parseExpression(String sql) throws ParseException {
        return delegate.parseExpression(sql);
    }

    @Override
    public TableIdentifier parseTableIdentifier(String sql) throws ParseException {
        return delegate.parseTableIdentifier(sql);
    }

    @Override
    public FunctionIdentifier parseFunctionIdentifier(String sql) throws ParseException {
        return delegate.parseFunctionIdentifier(sql);
    }

    @Override
    public Seq<String> parseMultipartIdentifier(String sql) throws ParseException {
        return delegate.parseMultipartIdentifier(sql);
    }

    @Override
    public StructType parseRoutineParam(String sql) throws ParseException {
        return delegate.parseRoutineParam(sql);
    }

    @Override
    public StructType parseTableSchema(String sql) throws ParseException {
        return delegate.parseTableSchema(sql);
    }

    @Override
    public DataType parseDataType(String sql) throws ParseException {
        return delegate.parseDataType(sql);
    }
}
