#!/bin/sh
# A hone-worker from the future: answers any request with a protocol-99 hello.
read -r line
echo '{"protocol":99,"type":"hello","id":"hello","worker":"hone-worker","version":"99.0"}'
