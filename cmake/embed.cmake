# cmake -DIN=file -DOUT=file.cpp -DNAME=symbol -P embed.cmake
# Writes a C++ file holding IN's bytes, so the program carries its schemas with it.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR bytes "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" body "${body}")
file(WRITE "${OUT}" "// Generated from ${IN} by cmake/embed.cmake. Do not edit.\n#include <string_view>\nnamespace ggufkit {\nstatic const unsigned char data[] = {\n${body}0};\nextern const std::string_view ${NAME}(reinterpret_cast<const char*>(data), ${bytes});\n}\n")
