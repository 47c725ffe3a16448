/**
 * Modes of everything the service creates under its data dir: the owner only. The process
 * umask (set at start) already strips the rest; the explicit modes keep that true for code
 * that runs with another umask (tests that open a store directly, embedders).
 */
export const PRIVATE_FILE_MODE = 0o600;
export const PRIVATE_DIR_MODE = 0o700;
