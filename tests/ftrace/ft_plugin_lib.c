/* The plugin: loaded with dlopen after the process started. */
static volatile int sink;
__attribute__((noinline)) static void plugin_helper(int i) { sink += i; }
void plugin_work(int i) { plugin_helper(i); }
