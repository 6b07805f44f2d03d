#pragma once

// What toml++ must not be given. Debian's toml++ 3 has undefined behaviour when it asks whether
// some non-ASCII characters are whitespace (is_non_ascii_horizontal_whitespace in its generated
// unicode tables reaches __builtin_unreachable() for most of U+00A1..U+0499, U+2C8E..U+3087 and
// U+FB26..U+FF1F). It asks that of
//   * every character outside strings and comments, and
//   * in a multi-line basic string ("""..."""), of the character after a backslash, of what follows
//     a line-ending backslash on its line, and of the first character after the lines it trims.
// TOML 1.0 allows only ASCII outside strings and comments, so a non-ASCII character there is an
// error anyway: screenToml reports it first, as "source:line:col: ...". The multi-line string
// places are valid TOML that toml++ cannot be trusted with; they are refused with the advice to
// write the character as a \uXXXX escape. A character's column counts code points, as toml++ does.
// Invalid UTF-8 ends the screen with success: toml++ stops with its own error there. Before all
// that, a control character (anything below U+0020 but tab, LF and CR, and U+007F) anywhere is
// refused: TOML forbids them everywhere, and toml++ went on past NUL bytes to the tables above.

#include <string_view>

#include "common/error.hpp"

namespace etcdagent {

Result<void> screenToml(std::string_view text, std::string_view source);

}  // namespace etcdagent
