package io.tidewater.spark.authz;

import java.util.List;
import java.util.Locale;
import java.util.Set;

import io.tidewater.spark.ServingParser;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.expressions.CallMethodViaReflection;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression;
import org.apache.spark.sql.catalyst.plans.logical.Command;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.View;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.command.ResetCommand;
import org.apache.spark.sql.execution.command.SetCommand;
import scala.Option;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * The check rule ({@code injectCheckRule}): every analyzed plan of a session, before anything runs,
 * against the grants of whoever runs it ({@link AccessControl#role}).
 *
 * <p>A query needs {@code QUERY} and {@code SELECT} on every table and permanent view it reads (a view's
 * own body is its owner's, so it is not checked: the serving views read their Delta tables by path).
 * A read of {@code serving.<p>} from the serving cache counts as a read of {@code serving.<p>}. Fail
 * closed: a file-path relation, a plan node or a function the check does not know is refused; so is a
 * command that is not a granted SHOW, DESCRIBE, EXPLAIN, USE or SET of a session-safe setting. No role
 * but the server's own may change the serving cache's views ({@code tidewater_serving__<p>}).
 */
public final class AccessCheck extends AbstractFunction1<LogicalPlan, BoxedUnit> {
    static final String EXPRESSIONS = "org.apache.spark.sql.catalyst.expressions.";
    static final String LOGICAL = "org.apache.spark.sql.catalyst.plans.logical.";
    /** Leaves that read no table: local rows, ranges, CTE references, data already computed in memory. */
    private static final Set<String> SAFE_LEAVES = Set.of("LocalRelation", "OneRowRelation", "Range", "CTERelationRef",
            "UnionLoopRef", "LogicalRDD", "ExternalRDD", "InMemoryRelation");
    /** Non-command logical nodes that write. */
    private static final Set<String> WRITES = Set.of("InsertIntoStatement", "WriteToStream", "WriteToStreamStatement");
    private static final Set<String> DENIED_EXPRESSIONS = Set.of("PythonUDF", "PythonUDAF", "PythonUDTF");
    /** Delta's reads of its own transaction log (snapshot loading); no SQL statement can name one. */
    private static final String DELTA_LOG_INDEX = "org.apache.spark.sql.delta.DeltaLogFileIndex";
    private static final String SERVING_CACHE = " (a name of the serving cache, which only the server changes)";

    private static final String VIEW_RESOLUTION = "org.apache.spark.sql.catalyst.analysis.ViewResolution$";
    private static final StackWalker WALKER = StackWalker.getInstance();

    private final SparkSession session;

    public AccessCheck(SparkSession session) {
        this.session = session;
    }

    @Override
    public BoxedUnit apply(LogicalPlan plan) {
        AccessRules.Role role = AccessControl.role(session);
        if (role == AccessControl.SERVER) {
            return BoxedUnit.UNIT;
        }
        if (plan instanceof Command) {
            command(role, plan);
        } else if (!role.all() && !resolvingView()) {
            require(role, StatementKind.QUERY, "the query");
            query(role, plan);
        }
        return BoxedUnit.UNIT;
    }

    /** Whether this check is the analyzer's check of a view's body while it resolves the view (Spark
     * checks a view's resolved body on its own): the body is the view owner's; the query that reads
     * the view is checked with the view as one of its tables. */
    private static boolean resolvingView() {
        return WALKER.walk(frames -> frames.anyMatch(f -> VIEW_RESOLUTION.equals(f.getClassName())));
    }

    private void command(AccessRules.Role role, LogicalPlan plan) {
        String cls = plan.getClass().getSimpleName().replace("$", "");
        StatementKind kind = StatementKind.ofCommand(cls);
        List<PlanObjects.Name> objects = PlanObjects.of(plan, session.sessionState().catalog().getCurrentDatabase(),
                session.sessionState().catalog().globalTempDatabase());
        if (kind == null || kind == StatementKind.SET) {
            protectServingCache(role, cls, plan, objects);
        }
        if (role.all()) {
            return;
        }
        if (kind == null) {
            throw new AccessDeniedException(role.name(), StatementKind.privilegeOf(cls), describe(objects));
        }
        require(role, kind, describe(objects));
        if (kind == StatementKind.SET) {
            setting(role, plan);
        } else if (kind == StatementKind.USE) {
            objects.stream().filter(o -> !PlanObjects.SESSION_CATALOG.equalsIgnoreCase(o.catalog())).findFirst()
                    .ifPresent(o -> { throw new AccessDeniedException(role.name(), "USE", "catalog " + o.catalog()); });
        } else if (kind == StatementKind.SHOW || kind == StatementKind.DESCRIBE) {
            for (PlanObjects.Name o : objects) {
                if (o.name() != null && !role.holds(null, o.catalog(), o.schema(), o.name())) {
                    throw new AccessDeniedException(role.name(), kind.name(), o.toString());
                }
            }
        }
    }

    /** The serving cache's views answer every client's {@code serving.<p>}: only the server changes them. */
    private static void protectServingCache(AccessRules.Role role, String cls, LogicalPlan plan, List<PlanObjects.Name> objects) {
        for (PlanObjects.Name o : objects) {
            if (o.name() != null && isServingCacheName(o.name())) {
                throw new AccessDeniedException(role.name(), StatementKind.privilegeOf(cls), o + SERVING_CACHE);
            }
        }
        for (String part : PlanObjects.lastNameParts(plan)) {
            if (isServingCacheName(part)) {
                throw new AccessDeniedException(role.name(), StatementKind.privilegeOf(cls), part + SERVING_CACHE);
            }
        }
    }

    static boolean isServingCacheName(String name) {
        return name.toLowerCase(Locale.ROOT).startsWith(ServingParser.PREFIX);
    }

    /** SET and RESET: listing ({@code SET}, {@code SET -v}) or reading and changing session-safe settings. */
    private static void setting(AccessRules.Role role, LogicalPlan plan) {
        String key = null;
        if (plan instanceof SetCommand set && set.kv().isDefined()) {
            Tuple2<String, Option<String>> kv = set.kv().get();
            key = "-v".equals(kv._1()) && kv._2().isEmpty() ? null : kv._1().trim();
        } else if (plan instanceof ResetCommand reset && reset.config().isDefined()) {
            key = reset.config().get().trim();
        }
        if (key != null && !role.maySet(key)) {
            throw new AccessDeniedException(role.name(), "SET", "setting " + key + " (not session-safe)");
        }
    }

    private void query(AccessRules.Role role, LogicalPlan node) {
        if (node instanceof View view) {
            if (!view.isTempView()) {
                table(role, view.desc());
                return;
            }
            TableIdentifier id = view.desc().identifier();
            if (isServingCacheName(id.table()) && id.database().isDefined()
                    && id.database().get().equalsIgnoreCase(session.sessionState().catalog().globalTempDatabase())) {
                String p = id.table().substring(ServingParser.PREFIX.length());
                requireSelect(role, PlanObjects.SESSION_CATALOG, ServingParser.DATABASE, p);
                return;
            }
        }
        String cls = node.getClass().getSimpleName();
        if (node instanceof Command || WRITES.contains(cls)) {
            throw new AccessDeniedException(role.name(), StatementKind.privilegeOf(cls), "the query");
        }
        if (node.children().isEmpty()) {
            leaf(role, node, cls);
        } else if (!node.getClass().getName().startsWith(LOGICAL)) {
            throw new AccessDeniedException(role.name(), "run plan step " + cls, "the query");
        }
        for (Expression e : CollectionConverters.asJava(node.expressions())) {
            expression(role, e);
        }
        for (LogicalPlan child : CollectionConverters.asJava(node.children())) {
            query(role, child);
        }
    }

    private void leaf(AccessRules.Role role, LogicalPlan node, String cls) {
        if (SAFE_LEAVES.contains(cls)) {
            return;
        }
        if (node instanceof org.apache.spark.sql.execution.datasources.LogicalRelation r) {
            if (r.catalogTable().isDefined()) {
                table(role, r.catalogTable().get());
            } else if (!(r.relation() instanceof org.apache.spark.sql.execution.datasources.HadoopFsRelation fs
                    && DELTA_LOG_INDEX.equals(fs.location().getClass().getName()))) {
                throw new AccessDeniedException(role.name(), "SELECT", "file path " + r.relation());
            }
        } else if (node instanceof org.apache.spark.sql.catalyst.catalog.HiveTableRelation h) {
            table(role, h.tableMeta());
        } else if (node instanceof org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation r
                && r.catalog().isDefined() && r.identifier().isDefined()) {
            String[] ns = r.identifier().get().namespace();
            requireSelect(role, r.catalog().get().name(), String.join(".", ns), r.identifier().get().name());
        } else {
            throw new AccessDeniedException(role.name(), "SELECT", "source " + cls);
        }
    }

    private void expression(AccessRules.Role role, Expression e) {
        String name = e.getClass().getName();
        if (e instanceof CallMethodViaReflection || !(name.startsWith(EXPRESSIONS) || name.startsWith("org.apache.spark.sql.delta."))
                || DENIED_EXPRESSIONS.contains(e.getClass().getSimpleName())) {
            throw new AccessDeniedException(role.name(), "EXECUTE", "function " + e.prettyName());
        }
        if (e instanceof SubqueryExpression s) {
            query(role, s.plan());
        }
        for (Expression child : CollectionConverters.asJava(e.children())) {
            expression(role, child);
        }
    }

    private void table(AccessRules.Role role, CatalogTable t) {
        TableIdentifier id = t.identifier();
        requireSelect(role, id.catalog().getOrElse(() -> PlanObjects.SESSION_CATALOG),
                id.database().getOrElse(() -> session.sessionState().catalog().getCurrentDatabase()), id.table());
    }

    private static void requireSelect(AccessRules.Role role, String catalog, String schema, String table) {
        if (!role.holds("SELECT", catalog, schema, table)) {
            throw new AccessDeniedException(role.name(), "SELECT", catalog + "." + schema + "." + table);
        }
    }

    private static void require(AccessRules.Role role, StatementKind kind, String object) {
        if (!role.mayRun(kind.name())) {
            throw new AccessDeniedException(role.name(), "run " + kind.name(), object);
        }
    }

    private static String describe(List<PlanObjects.Name> objects) {
        return objects.isEmpty() ? "the session" : objects.get(0).toString();
    }
}
