import pg from 'pg';

/** The URL with an application_name, so that a provider's connections can be found in pg_stat_activity. */
export function named(url: string, applicationName: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('application_name', applicationName);
  return parsed.href;
}

/** What the server says about the connections of `applicationName`: how many, and how many sit in LISTEN. */
export async function connectionsOf(url: string, applicationName: string): Promise<{ total: number; listening: number }> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    const { rows } = await client.query<{ total: string; listening: string }>(
      `SELECT count(*) AS total, count(*) FILTER (WHERE query LIKE 'LISTEN %') AS listening
         FROM pg_stat_activity WHERE application_name = $1`,
      [applicationName],
    );
    return { total: Number(rows[0]!.total), listening: Number(rows[0]!.listening) };
  } finally {
    await client.end();
  }
}
