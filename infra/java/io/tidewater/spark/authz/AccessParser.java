package io.tidewater.spark.authz;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation;
import org.apache.spark.sql.catalyst.analysis.UnresolvedTableValuedFunction;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression;
import org.apache.spark.sql.catalyst.parser.ParameterContext;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.classic.SparkSession;
import io.tidewater.spark.DelegatingParser;
import org.apache.spark.sql.execution.datasources.DataSource$;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The outermost SQL parser of the Thrift server's sessions: checks what must be refused before the
 * analyzer runs, because analysing it already acts.
 *
 * <ul>
 * <li>Session settings: a client can set any setting when it opens a session (HiveServer2 copies
 * {@code set:hiveconf:} and {@code set:hivevar:} entries into the session, past the SET check), e.g.
 * turn variable substitution on to read the server's settings through {@code ${...}}, add a catalog
 * plugin, or (any unknown key reaches the session's Hadoop configuration) pick the class of a file
 * system. A statement of a session whose settings differ from a fresh session's is refused, before its
 * text is even substituted, unless each such setting is session-safe for the role, set by the server
 * itself, or a known Spark setting that does not touch security ({@link AccessControl#harmless}).</li>
 * <li>File-path relations ({@code text.`/path`}, any data source name or a path as the table, Delta's
 * commands and table functions on a path): the analyzer lists and reads the path to infer its schema,
 * and its errors can quote the file.</li>
 * <li>Other catalogs, {@code IDENTIFIER(...)} table names (resolved only during analysis), SQL scripts
 * and {@code EXECUTE IMMEDIATE} (their statements would be analysed without this check first).</li>
 * </ul>
 * Roles with {@code "all"} and the server's own sessions skip these checks. The analyzed plan is then
 * checked by {@link AccessCheck}.
 */
public final class AccessParser extends DelegatingParser {
    private static final Set<String> REFUSED_NODES = Set.of("PlanWithUnresolvedIdentifier", "CompoundBody",
            "ExecuteImmediateQuery", "ExecuteImmediateCommand", "UnresolvedExecuteImmediate");
    private static final int MAX_CACHED_NAMES = 10_000;
    private static final Map<String, Boolean> DATA_SOURCES = new ConcurrentHashMap<>();

    private final SparkSession session;

    public AccessParser(SparkSession session, ParserInterface delegate) {
        super(delegate);
        this.session = session;
    }

    @Override
    public LogicalPlan parsePlan(String sql) throws ParseException {
        AccessRules.Role role = before();
        return after(role, delegate.parsePlan(sql));
    }

    @Override
    public LogicalPlan parsePlanWithParameters(String sql, ParameterContext parameters) throws ParseException {
        AccessRules.Role role = before();
        return after(role, delegate.parsePlanWithParameters(sql, parameters));
    }

    private AccessRules.Role before() {
        AccessRules.Role role = AccessControl.role(session);
        if (role.all() || role == AccessControl.INTERNAL) {  // INTERNAL runs USE only; the client's own
            return role;                                     // statements are checked with the client's role
        }
        Map<String, String> baseline = AccessControl.baseline();
        Map<String, String> now = CollectionConverters.asJava(session.sessionState().conf().getAllConfs());
        List<String> moved = new ArrayList<>();
        for (Map.Entry<String, String> e : now.entrySet()) {
            String key = e.getKey();
            if (!e.getValue().equals(baseline.get(key)) && !role.maySet(key) && !AccessControl.serverSet(key, e.getValue())
                    && !AccessControl.harmless(key)) {
                moved.add(key);
            }
        }
        if (!moved.isEmpty()) {
            Collections.sort(moved);
            throw new AccessDeniedException(role.name(), "SET", "setting " + String.join(", ", moved) + " (not "
                    + "session-safe; set in this session, e.g. in the connection's settings: reconnect without it)");
        }
        return role;
    }

    private LogicalPlan after(AccessRules.Role role, LogicalPlan plan) {
        if (!role.all()) {
            walk(role, plan, 0);
        }
        return plan;
    }

    private void walk(AccessRules.Role role, Object value, int depth) {
        if (depth > 64) {
            throw new AccessDeniedException(role.name(), "run", "a statement nested this deeply");
        }
        if (value instanceof LogicalPlan node) {
            node(role, node);
            for (int i = 0; i < node.productArity(); i++) {
                walk(role, node.productElement(i), depth + 1);
            }
            for (Expression e : CollectionConverters.asJava(node.expressions())) {
                walk(role, e, depth + 1);
            }
        } else if (value instanceof Expression e) {
            if (e instanceof SubqueryExpression s) {
                walk(role, s.plan(), depth + 1);
            }
            for (Expression child : CollectionConverters.asJava(e.children())) {
                walk(role, child, depth + 1);
            }
        } else if (value instanceof scala.Option<?> o && o.isDefined()) {
            walk(role, o.get(), depth + 1);
        } else if (value instanceof scala.collection.Iterable<?> items) {
            items.foreach(v -> {
                walk(role, v, depth + 1);
                return null;
            });
        } else if (value instanceof scala.Product tuple && tuple.getClass().getName().startsWith("scala.Tuple")) {
            for (int i = 0; i < tuple.productArity(); i++) {  // e.g. a CTE's (name, definition, ...)
                walk(role, tuple.productElement(i), depth + 1);
            }
        }
    }

    private static void node(AccessRules.Role role, LogicalPlan node) {
        String cls = node.getClass().getSimpleName();
        if (REFUSED_NODES.contains(cls)) {
            throw new AccessDeniedException(role.name(), "run " + StatementKind.privilegeOf(cls), "the statement");
        }
        for (int i = 0; i < node.productArity(); i++) {  // Delta's commands on a path: DESCRIBE HISTORY '/x'
            Object path = node.productElement(i);
            path = path instanceof scala.Option<?> o && o.isDefined() ? o.get() : path;
            if ("path".equals(node.productElementName(i)) && path instanceof String p && !p.isEmpty()) {
                throw new AccessDeniedException(role.name(), "read", "path " + p);
            }
        }
        if (node instanceof UnresolvedTableValuedFunction f) {  // Delta's table_changes_by_path('/x', 0)
            String name = String.join(".", CollectionConverters.asJava(f.name())).toLowerCase(Locale.ROOT);
            if (name.contains("by_path")) {
                throw new AccessDeniedException(role.name(), "SELECT", "a path given to " + name);
            }
        }
        if (node instanceof UnresolvedRelation r) {
            List<String> parts = CollectionConverters.asJava(r.multipartIdentifier());
            String last = parts.get(parts.size() - 1);
            if (last.contains("/") || last.contains(":") || (parts.size() == 2 && isDataSource(parts.get(0)))) {
                throw new AccessDeniedException(role.name(), "SELECT", "file path " + String.join(".", parts));
            }
            if (parts.size() > 3 || (parts.size() == 3 && !PlanObjects.SESSION_CATALOG.equalsIgnoreCase(parts.get(0)))) {
                throw new AccessDeniedException(role.name(), "SELECT", "catalog " + parts.get(0));
            }
        }
    }

    /** Whether {@code name} is a data source ({@code text}, {@code delta}, a class name): {@code name.`x`} reads files. */
    private static boolean isDataSource(String name) {
        Boolean known = DATA_SOURCES.get(name);
        if (known != null) {
            return known;
        }
        boolean found;
        try {
            DataSource$.MODULE$.lookupDataSource(name, org.apache.spark.sql.internal.SQLConf.get());
            found = true;
        } catch (Throwable e) {  // not a data source (ClassNotFound and its wrappers)
            found = false;
        }
        if (DATA_SOURCES.size() < MAX_CACHED_NAMES) {
            DATA_SOURCES.put(name, found);
        }
        return found;
    }

    /** Not checked: Spark parses a permanent view's stored text with this; the view is its owner's. */
    @Override
    public LogicalPlan parseQuery(String sql) throws ParseException {
        return delegate.parseQuery(sql);
    }
}
