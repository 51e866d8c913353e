/* luatest: `kvsite lua-test FILE...` runs Lua test files in the same sandbox
 * pages use, with checks/ of the project. A test file calls test(name, fn) for
 * each case; a case passes when fn returns without error. Prints a line per
 * failure and a final "N passed, N failed" line. */
#ifndef KV_LUATEST_H
#define KV_LUATEST_H

int luatest_main(int argc, char **argv);

#endif
