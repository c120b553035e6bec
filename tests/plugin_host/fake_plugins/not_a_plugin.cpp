// An ordinary shared library that happens to sit in a plugin folder with a plugin-like name.
extern "C" __attribute__((visibility("default"))) int some_function() { return 42; }
