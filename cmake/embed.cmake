# Turns a text file into a C string constant: cmake -DIN=f -DOUT=f.c -DSYM=name -P embed.cmake
file(READ ${IN} content HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," content "${content}")
file(WRITE ${OUT} "/* Generated from ${IN}; do not edit. */\nextern const char ${SYM}[];\nconst char ${SYM}[] = {${content} 0x00};\n")
