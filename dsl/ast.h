#pragma once
// The syntax tree of .gerule files: rules (patterns, predicates, rewrites,
// metadata) and their in-file tests. Every node carries its source location.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace geopt::dsl {

struct SourceLoc {
  std::string file;
  int line = 0;    // 1-based
  int column = 0;  // 1-based
  std::string to_string() const { return file + ":" + std::to_string(line) + ":" + std::to_string(column); }
};

// A literal in attribute predicates, sets and assignments.
struct Literal {
  enum class Kind { Number, String, Ident, List } kind = Kind::Number;
  double number = 0;
  bool is_integer = false;  // written without '.', 'e'
  std::string text;         // String and Ident
  std::vector<Literal> items;
  std::string to_string() const;
};

enum class CmpOp { Eq, Ne, Lt, Le, Gt, Ge, Approx, In };
const char* cmp_op_text(CmpOp op);

struct Pattern;
using PatternPtr = std::shared_ptr<Pattern>;

// A check on one attribute of a matched op (ONNX defaults apply when absent).
struct AttrPred {
  SourceLoc loc;
  std::string name;
  CmpOp op = CmpOp::Eq;
  bool absent = false;           // `!name`: the attribute must not be set
  std::optional<Literal> value;  // ==, !=, <, ..., ~=
  std::string bind_var;          // `name == %v` with %v bound here: binds the attribute's value
  double tolerance = 0;          // ~= ... +- tolerance
  double lo = 0, hi = 0;         // in lo..hi
  std::vector<Literal> set;      // in {a, b}
};

struct Pattern {
  enum class Kind { Var, Const, Number, Op } kind = Kind::Var;
  SourceLoc loc;
  std::string var;               // Var; Const (optional binding); Op (`as %v`)
  double number = 0;             // Number: every element equals this
  std::string domain;            // Op
  std::string op;                // Op; "*" matches any op
  std::vector<PatternPtr> args;  // Op
  PatternPtr rest;               // `p ...`: further inputs each matching p (null: none allowed); its
                                 // variables are list variables, one binding per input
  bool rest_any = false;         // bare `...`: any further inputs
  int output_index = 0;          // `Op(...)[k]`: which output of the op this pattern stands for
  std::vector<AttrPred> attrs;
};

// Terms of `where` predicates.
struct Term {
  enum class Kind {
    Number,
    Var,
    Rank,
    Dim,
    DType,
    Shape,
    Zeros,
    ZeroRows,
    FullRows,
    Element,
    Ident
  } kind = Kind::Number;
  SourceLoc loc;
  double number = 0;
  std::string var;               // Var, Rank, Dim, DType, Shape, Zeros, ZeroRows, FullRows, Element
  int64_t axis = 0;              // Dim: the axis; Element (`%k[i]`): the index
  std::string ident;             // Ident (a dtype name such as f32)
  std::optional<double> modulo;  // term % modulo
  std::string to_string() const;
};

struct Predicate {
  enum class Kind { Compare, IsConst, IsStatic, OneUse } kind = Kind::Compare;
  SourceLoc loc;
  Term lhs;
  CmpOp op = CmpOp::Eq;
  Term rhs;               // Compare (not In)
  double tolerance = 0;   // ~=
  double lo = 0, hi = 0;  // in lo..hi
  bool is_range = false;
  std::vector<Literal> set;  // in {..}
  std::string var;           // IsConst, IsStatic, OneUse
  std::string to_string() const;
};

struct Replacement;
using ReplacementPtr = std::shared_ptr<Replacement>;

// One element of a list expression: a number, dim(%v, axis) / rank(%v), element
// `index` of a bound ints attribute (`%k[0]`), a bound scalar attribute or scalar
// constant (`%alpha`, index -1), the elements of a bound ints attribute picked by
// another (`%p[%q]`: gather_var set; expands to one element per index), or a sum of
// single numbers of those kinds (`%p[2] + %q[0]`: addends set).
struct ListItem {
  std::vector<ListItem> addends;  // `%p[2] + %q[0]`: the sum of these, each one number
  std::optional<double> number;
  bool splice = false;  // `%v...`: every value a list variable holds
  std::optional<Term> term;
  std::string var;
  int64_t index = -1;
  std::string gather_var;
};

struct AttrAssign {
  SourceLoc loc;
  std::string name;
  std::optional<Literal> value;
  std::vector<ListItem> list;       // `[dim(%x, 2), %k[0], 1]` (ints)
  std::string var;                  // a bound attribute or a bound scalar constant
  std::optional<Term> term;         // dim(%v, axis) or rank(%v) of a bound value
  std::optional<double> numerator;  // `n / %var`: n divided by the bound scalar %var
  std::string factor;               // `%var * %factor`: the product of two bound scalars
};

struct Replacement {
  enum class Kind { Var, Op, Const, Absent } kind = Kind::Var;  // Absent: `_`, an omitted optional input
  SourceLoc loc;
  std::string var;
  bool splice = false;  // `%xs...` among an op's inputs: every value the list variable holds
  std::string domain, op;
  std::vector<ReplacementPtr> args;
  int output_index = 0;
  std::vector<AttrAssign> attrs;
  // Const: `const i64 [dim(%x, 0), -1]` (1-D) or `const dtype(%x) %eps` (a scalar).
  std::string const_dtype;     // a dtype name, or empty when const_dtype_of is set
  std::string const_dtype_of;  // `dtype(%v)`: the bound value's element type
  bool const_is_list = false;
  std::vector<ListItem> const_items;
};

struct Rewrite {
  SourceLoc loc;
  std::string target;  // the matched value to replace; empty: the first root
  ReplacementPtr replacement;
};

struct Expectation {
  enum class Kind { Count, Fired, Matched, OutputsEqual } kind = Kind::Count;
  SourceLoc loc;
  std::string domain, op;  // Count
  std::string rule;        // Fired, Matched
  CmpOp cmp = CmpOp::Eq;
  int64_t value = 0;
  double tolerance = 1e-5;  // OutputsEqual: max abs error
};

struct RuleTest {
  SourceLoc loc;
  std::string name;
  std::string model_text;  // ONNX textual syntax
  std::string model_file;  // or a path, relative to the rule file
  std::vector<Expectation> expectations;
};

struct Let {
  SourceLoc loc;
  std::string var;
  PatternPtr pattern;
};

struct Rule {
  SourceLoc loc;
  std::string name;
  std::vector<std::string> tags;
  std::string doc;
  bool enabled = true;
  std::vector<Let> lets;
  std::vector<PatternPtr> roots;  // `match a, b, c`
  SourceLoc match_loc;
  std::vector<Predicate> where;
  std::vector<Rewrite> rewrites;
  bool fold = false;
  int64_t fold_max_elements = 1 << 20;
  std::vector<RuleTest> tests;

  bool has_tag(std::string_view tag) const { return std::find(tags.begin(), tags.end(), tag) != tags.end(); }
};

// How many outputs the node built for `r` has: one past the highest output index
// any rewrite of the rule takes from the same op, so `Op(...)[0]` and `Op(...)[1]`
// in two rewrites are one node with two outputs (AddLayerNorm's Y and Sum).
int replacement_outputs(const Rule& rule, const Replacement& r);

struct RuleFile {
  std::string path;
  std::vector<Rule> rules;
};

}  // namespace geopt::dsl
