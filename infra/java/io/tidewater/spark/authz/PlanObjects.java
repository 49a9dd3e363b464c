package io.tidewater.spark.authz;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.analysis.ResolvedIdentifier;
import org.apache.spark.sql.catalyst.analysis.ResolvedNamespace;
import org.apache.spark.sql.catalyst.analysis.ResolvedPersistentView;
import org.apache.spark.sql.catalyst.analysis.ResolvedTable;
import org.apache.spark.sql.catalyst.analysis.ResolvedTempView;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.HiveTableRelation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.SubqueryAlias;
import org.apache.spark.sql.catalyst.plans.logical.View;
import org.apache.spark.sql.execution.command.CreateViewCommand;
import org.apache.spark.sql.catalyst.analysis.GlobalTempView$;
import org.apache.spark.sql.catalyst.analysis.PersistedView$;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.connector.catalog.Identifier;
import scala.Option;
import scala.Product;
import scala.jdk.javaapi.CollectionConverters;

/** The objects a command names (tables, views, namespaces), read from its fields, as catalog.schema.name. */
final class PlanObjects {
    static final String SESSION_CATALOG = "spark_catalog";

    /** One object: a table or view ({@code name} set) or a namespace ({@code name} null). */
    record Name(String catalog, String schema, String name) {
        @Override
        public String toString() {
            if (TEMPORARY.equals(schema)) {
                return "temporary view " + name;
            }
            return name == null ? catalog + "." + schema : catalog + "." + schema + "." + name;
        }
    }

    /** The schema of a session's temporary view (it has none). */
    static final String TEMPORARY = "(temporary)";

    private PlanObjects() {
    }

    static List<Name> of(LogicalPlan command, String currentSchema, String globalTempSchema) {
        List<Name> out = new ArrayList<>();
        if (command instanceof CreateViewCommand view && !(view.viewType() instanceof PersistedView$)) {
            boolean global = view.viewType() instanceof GlobalTempView$;
            out.add(new Name(SESSION_CATALOG, global ? globalTempSchema : TEMPORARY, view.name().table()));
        }
        for (int i = 0; i < command.productArity(); i++) {
            Object value = command.productElement(i);
            String field = command.productElementName(i).toLowerCase(java.util.Locale.ROOT);
            if (field.contains("identifier") && value instanceof scala.collection.Seq<?> seq && seq.size() >= 2
                    && seq.head() instanceof String) {
                List<?> parts = CollectionConverters.asJava(seq);
                int n = parts.size();
                out.add(new Name(n > 2 ? String.valueOf(parts.get(0)) : SESSION_CATALOG, String.valueOf(parts.get(n - 2)),
                        String.valueOf(parts.get(n - 1))));
            } else {
                collect(value, currentSchema, out, 0);
            }
        }
        return out;
    }

    /** Every string sequence among the fields (multi-part names such as CACHE TABLE's), last part each. */
    static List<String> lastNameParts(LogicalPlan command) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < command.productArity(); i++) {
            Object value = command.productElement(i);
            if (value instanceof scala.collection.Seq<?> seq && !seq.isEmpty() && seq.last() instanceof String last) {
                out.add(last);
            } else if (value instanceof String s) {
                out.add(s);
            }
        }
        return out;
    }

    private static void collect(Object value, String currentSchema, List<Name> out, int depth) {
        if (value == null || depth > 4) {
            return;
        }
        if (value instanceof TableIdentifier t) {
            out.add(new Name(t.catalog().getOrElse(() -> SESSION_CATALOG),
                    t.database().getOrElse(() -> currentSchema), t.table()));
        } else if (value instanceof CatalogTable t) {
            collect(t.identifier(), currentSchema, out, depth + 1);
        } else if (value instanceof ResolvedTable t) {
            out.add(name(t.catalog().name(), t.identifier()));
        } else if (value instanceof ResolvedPersistentView v) {
            out.add(name(v.catalog().name(), v.identifier()));
        } else if (value instanceof ResolvedTempView v) {
            out.add(name(SESSION_CATALOG, v.identifier()));
        } else if (value instanceof ResolvedIdentifier r) {
            out.add(name(r.catalog().name(), r.identifier()));
        } else if (value instanceof ResolvedNamespace n) {
            List<String> ns = CollectionConverters.asJava(n.namespace());
            out.add(new Name(n.catalog().name(), String.join(".", ns), null));
        } else if (value instanceof Identifier id) {
            out.add(name(SESSION_CATALOG, id));
        } else if (value.getClass().getName().endsWith(".DeltaTableV2")) {
            deltaTable(value, currentSchema, out);
        } else if (value instanceof Option<?> o) {
            if (o.isDefined()) {
                collect(o.get(), currentSchema, out, depth + 1);
            }
        } else if (value instanceof scala.collection.Iterable<?> seq) {
            seq.foreach(v -> {
                collect(v, currentSchema, out, depth + 1);
                return null;
            });
        } else if (value instanceof LogicalRelation r && r.catalogTable().isDefined()) {
            collect(r.catalogTable().get(), currentSchema, out, depth + 1);
        } else if (value instanceof HiveTableRelation h) {
            collect(h.tableMeta(), currentSchema, out, depth + 1);
        } else if (value instanceof DataSourceV2Relation r && r.catalog().isDefined() && r.identifier().isDefined()) {
            out.add(name(r.catalog().get().name(), r.identifier().get()));
        } else if (value instanceof SubqueryAlias a) {
            collect(a.child(), currentSchema, out, depth + 1);
        } else if (value instanceof View v) {
            collect(v.desc(), currentSchema, out, depth + 1);
        } else if (value instanceof LogicalPlan p && p.getClass().getSimpleName().startsWith("Resolved")) {
            for (int i = 0; i < p.productArity(); i++) {
                collect(p.productElement(i), currentSchema, out, depth + 1);
            }
        }
    }

    /** A Delta table: its catalog entry, else its path (as the schema {@code delta}, as Delta names it). */
    private static void deltaTable(Object table, String currentSchema, List<Name> out) {
        try {
            Method catalogTable = table.getClass().getMethod("catalogTable");
            Option<?> entry = (Option<?>) catalogTable.invoke(table);
            if (entry.isDefined()) {
                collect(entry.get(), currentSchema, out, 1);
                return;
            }
            out.add(new Name(SESSION_CATALOG, "delta", String.valueOf(table.getClass().getMethod("path").invoke(table))));
        } catch (ReflectiveOperationException e) {
            out.add(new Name(SESSION_CATALOG, "delta", "(unknown Delta table)"));
        }
    }

    private static Name name(String catalog, Identifier id) {
        String[] ns = id.namespace();
        return new Name(catalog, ns.length == 0 ? "" : String.join(".", Arrays.asList(ns)), id.name());
    }
}
