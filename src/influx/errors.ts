// The error of one statement: InfluxDB answers it inside that statement's result, with HTTP 200.

export class StatementError extends Error {}
