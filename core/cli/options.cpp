// Placeholder until the options module lands.
