/**
 * The API reference, rendered from the gateway's own OpenAPI document (GET /api/v1/openapi.json):
 * every route it serves, grouped by tag, with credentials, parameters, body and answers, and the named
 * schemas they refer to. Public, like the document.
 */
import type { ReactNode } from 'react';
import { api } from '../api/client';
import { ErrorNotice } from '../components/error-notice';
import { useLoader } from '../components/use-loader';

type Schema = { [key: string]: unknown };

interface Operation {
  summary: string;
  description?: string;
  tags: string[];
  security: Record<string, string[]>[];
  parameters?: { name: string; in: string; required: boolean; description?: string; schema: Schema }[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<string, { description: string; $ref?: string; content?: Record<string, Schema> }>;
}

interface OpenApi {
  info: { title: string; version: string; description: string };
  tags: { name: string; description: string }[];
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}

const CREDENTIALS: Record<string, string> = {
  inferenceKey: 'inference key',
  managementKey: 'management key',
  session: 'dashboard session',
  adminToken: 'admin token',
  metricsToken: 'metrics token',
};

function credentials(security: Record<string, string[]>[]): string {
  if (security.length === 0) return 'none (public)';
  return security.map((entry) => Object.keys(entry).map((name) => CREDENTIALS[name] ?? name)[0] ?? 'none').join(' or ');
}

const REF = '#/components/schemas/';

function refName(schema: Schema): string | null {
  return typeof schema.$ref === 'string' && schema.$ref.startsWith(REF) ? schema.$ref.slice(REF.length) : null;
}

/** A description from the document: its `inline code` (Markdown backticks) as code, the rest as text. */
function Prose(props: { text: string }) {
  return <>{props.text.split('`').map((part, i) => (i % 2 === 1 ? <code key={i}>{part}</code> : part))}</>;
}

/** A one-line description of a schema's type, with links to named schemas. */
function TypeOf(props: { schema: Schema }): ReactNode {
  const { schema } = props;
  const name = refName(schema);
  if (name) return <a href={`#schema-${name}`}>{name}</a>;
  if (Array.isArray(schema.anyOf))
    return (schema.anyOf as Schema[]).map((option, index) => (
      <span key={index}>
        {index > 0 ? ' | ' : null}
        <TypeOf schema={option} />
      </span>
    ));
  if ('const' in schema) return <code>{JSON.stringify(schema.const)}</code>;
  if (Array.isArray(schema.enum))
    return <span>{(schema.enum as unknown[]).map((v) => JSON.stringify(v)).join(' | ')}</span>;
  if (schema.type === 'array')
    return (
      <span>
        array of <TypeOf schema={(schema.items as Schema | undefined) ?? {}} />
      </span>
    );
  if (typeof schema.type === 'string') {
    const format = typeof schema.format === 'string' ? ` (${schema.format})` : '';
    return <span>{`${schema.type}${format}`}</span>;
  }
  return <span>any</span>;
}

/** An object's fields as a table (nested inline objects expanded); other schemas as their type. */
function SchemaView(props: { schema: Schema; depth?: number }): ReactNode {
  const { schema, depth = 0 } = props;
  const properties = schema.properties as Record<string, Schema> | undefined;
  if (schema.type !== 'object' || !properties || Object.keys(properties).length === 0)
    return (
      <p>
        <TypeOf schema={schema} />
      </p>
    );
  const required = new Set((schema.required as string[] | undefined) ?? []);
  return (
    <table className="data-table schema-table">
      <thead>
        <tr>
          <th scope="col">Field</th>
          <th scope="col">Type</th>
          <th scope="col">Notes</th>
        </tr>
      </thead>
      <tbody>
        {Object.entries(properties).map(([field, inner]) => (
          <tr key={field}>
            <td>
              <code>{field}</code>
              {required.has(field) ? null : <span className="muted"> optional</span>}
            </td>
            <td>
              {inner.type === 'object' && inner.properties && depth < 2 ? (
                <SchemaView schema={inner} depth={depth + 1} />
              ) : (
                <TypeOf schema={inner} />
              )}
            </td>
            <td>{typeof inner.description === 'string' ? <Prose text={inner.description} /> : null}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function OperationView(props: { method: string; path: string; operation: Operation }) {
  const { method, path, operation } = props;
  const body = operation.requestBody?.content['application/json']?.schema;
  // Every error is the error record (a reference); the other answers have their own schemas.
  const errors = Object.entries(operation.responses).filter(([, answer]) => answer.$ref !== undefined);
  const answers = Object.entries(operation.responses).filter(([, answer]) => answer.$ref === undefined);
  return (
    <article className="api-operation" aria-label={`${method.toUpperCase()} ${path}`}>
      <h3>
        <code className={`api-method api-method-${method}`}>{method.toUpperCase()}</code> <code>{path}</code>
      </h3>
      <p>{operation.summary}</p>
      {operation.description ? (
        <p className="muted">
          <Prose text={operation.description} />
        </p>
      ) : null}
      <p>
        <strong>Credentials:</strong> {credentials(operation.security)}
      </p>
      {operation.parameters?.length ? (
        <table className="data-table schema-table">
          <caption className="visually-hidden">Parameters</caption>
          <thead>
            <tr>
              <th scope="col">Parameter</th>
              <th scope="col">In</th>
              <th scope="col">Type</th>
              <th scope="col">Notes</th>
            </tr>
          </thead>
          <tbody>
            {operation.parameters.map((parameter) => (
              <tr key={`${parameter.in}:${parameter.name}`}>
                <td>
                  <code>{parameter.name}</code>
                  {parameter.required ? null : <span className="muted"> optional</span>}
                </td>
                <td>{parameter.in}</td>
                <td>
                  <TypeOf schema={parameter.schema} />
                </td>
                <td>{parameter.description ? <Prose text={parameter.description} /> : null}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {body ? (
        <>
          <h4>Body (JSON)</h4>
          <SchemaView schema={body} />
        </>
      ) : null}
      <h4>Answers</h4>
      <dl className="api-answers">
        {answers.map(([status, answer]) => {
          const json = answer.content?.['application/json']?.schema as Schema | undefined;
          const others = Object.keys(answer.content ?? {}).filter((type) => type !== 'application/json');
          return (
            <div key={status}>
              <dt>
                <code>{status}</code> <Prose text={answer.description} />
              </dt>
              <dd>
                {json ? <SchemaView schema={json} /> : null}
                {others.length > 0 ? <span className="muted">{others.join(', ')}</span> : null}
              </dd>
            </div>
          );
        })}
      </dl>
      <p className="api-errors">
        <strong>Errors</strong> (each an <a href="#schema-Error">Error</a>):{' '}
        {errors.map(([status, answer], index) => (
          <span key={status}>
            {index > 0 ? '; ' : null}
            <code>{status}</code> <Prose text={answer.description} />
          </span>
        ))}
      </p>
    </article>
  );
}

export function ApiReferencePage() {
  const loaded = useLoader(() => api<OpenApi>('GET', '/openapi.json', undefined, { quiet401: true }), []);
  const doc = loaded.data;
  return (
    <section className="api-reference">
      <h1>API reference</h1>
      <ErrorNotice error={loaded.error} title="Could not load the API description" onRetry={loaded.reload} />
      {loaded.loading && !doc ? <p className="muted">Loading…</p> : null}
      {doc ? (
        <>
          <p className="muted">
            {doc.info.title} {doc.info.version}. <Prose text={doc.info.description} /> The same description as OpenAPI
            3.1: <a href="/api/v1/openapi.json">/api/v1/openapi.json</a>.
          </p>
          <nav aria-label="API sections">
            <ul className="api-toc">
              {doc.tags.map((tag) => (
                <li key={tag.name}>
                  <a href={`#tag-${tag.name.replace(/\s+/g, '-')}`}>{tag.name}</a>
                </li>
              ))}
              <li>
                <a href="#schemas">Schemas</a>
              </li>
            </ul>
          </nav>
          {doc.tags.map((tag) => {
            const operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
              Object.entries(methods)
                .filter(([, operation]) => operation.tags.includes(tag.name))
                .map(([method, operation]) => ({ path, method, operation })),
            );
            if (operations.length === 0) return null;
            return (
              <section key={tag.name} id={`tag-${tag.name.replace(/\s+/g, '-')}`} aria-labelledby={`h-${tag.name}`}>
                <h2 id={`h-${tag.name}`}>{tag.name}</h2>
                <p className="muted">
                  <Prose text={tag.description} />
                </p>
                {operations.map(({ path, method, operation }) => (
                  <OperationView key={`${method} ${path}`} method={method} path={path} operation={operation} />
                ))}
              </section>
            );
          })}
          <section id="schemas" aria-labelledby="h-schemas">
            <h2 id="h-schemas">Schemas</h2>
            {Object.entries(doc.components.schemas).map(([name, schema]) => (
              <article key={name} id={`schema-${name}`} className="api-operation" aria-label={`Schema ${name}`}>
                <h3>
                  <code>{name}</code>
                </h3>
                {typeof schema.description === 'string' ? (
                  <p className="muted">
                    <Prose text={schema.description} />
                  </p>
                ) : null}
                <SchemaView schema={schema} />
              </article>
            ))}
          </section>
        </>
      ) : null}
    </section>
  );
}
