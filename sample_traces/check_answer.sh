# A finish gate for the sample suite: the answer must say whether the product exceeds 80.
# It gets {"answer": "..."} on stdin; exit 0 accepts, anything else rejects with this output.
input=$(cat)
case "$input" in
  *"greater than 80"* | *"exceeds 80"*) exit 0 ;;
esac
echo "rejected: the answer must say whether the product exceeds 80"
exit 1
